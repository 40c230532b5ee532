"""What selection asks of the apps above it (the mechanism: :mod:`webarchive.hooks`)."""

from webarchive.hooks import Hook

record_panels = Hook(
    "selection.record_panels",
    doc="(record, user) → a panel of the record's page below its description: a dict with 'template' "
    "(rendered with the page's context plus the panel's) and 'context'. Every provider's panel is shown, "
    "in order; storage shows the record's harvests and the curators' notes on them.",
)
