"""The CDK application: stage configuration, one construct per capability, two thin stacks."""
