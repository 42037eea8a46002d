"""Thin Lambda entry points: Powertools decorators around one call into the domain."""
