"""`make load`: many clients creating and following entities over HTTP on the local cloud."""
