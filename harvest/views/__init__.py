"""Pages of the planning side (Planning and Operations areas)."""
