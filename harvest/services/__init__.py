"""Writes on the planning side, one module per seam: domains, planning objects, transfer, jobs, launcher."""
