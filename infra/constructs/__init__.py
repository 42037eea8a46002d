"""One construct per capability; stacks compose them and do the grants."""
