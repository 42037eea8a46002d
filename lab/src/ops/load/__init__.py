"""`make load`: many clients placing and following orders over HTTP on the local cloud."""
