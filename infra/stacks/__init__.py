"""The two stacks: stateful data, and compute that can be redeployed freely."""
