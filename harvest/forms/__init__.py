"""Forms of the planning side."""
