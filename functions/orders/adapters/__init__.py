"""AWS implementations of `orders.ports`. Each takes its boto3 client and resource name."""
