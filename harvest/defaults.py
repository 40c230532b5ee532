"""The channels, templates and budget mappings a fresh installation starts with.

Curators change them in Planning; this only gives the transfer from selection
something to map to on day one. Used by the migration that installs them (with
its historical models), by the demo and by tests that start from an empty
database. Existing rows are left as they are.
"""

# Depth (selection) → the template that harvests it.
TEMPLATES = {
    "page": {
        "name": "selective-page",
        "depth_policy": "page",
        "description": "The seed pages and their requisites.",
    },
    "page+1": {
        "name": "selective-page+1",
        "depth_policy": "clicks",
        "clicks": 1,
        "description": "The seeds and one click.",
    },
    "page+2": {
        "name": "selective-page+2",
        "depth_policy": "clicks",
        "clicks": 2,
        "description": "The seeds and two clicks.",
    },
    "path": {
        "name": "selective-path",
        "depth_policy": "path",
        "description": "Everything under the seed's directory.",
    },
    "host": {"name": "selective-host", "depth_policy": "host", "description": "The whole host of the seed."},
    "domain": {
        "name": "selective-domain",
        "depth_policy": "domain",
        "description": "The whole registered domain.",
    },
}
DEFAULT_TEMPLATE = {
    "name": "default",
    "depth_policy": "domain",
    "description": "New domains' default configuration and snapshot harvests: the whole domain.",
}
# Budget (selection) → max objects per configuration.
BUDGET_OBJECTS = {"small": 10_000, "medium": 100_000, "large": 1_000_000}


def planning_defaults_ensure(apps) -> None:
    """Create the default channels, templates and budget mappings that do not exist yet."""
    channel = apps.get_model("harvest", "HarvestChannel")
    template = apps.get_model("harvest", "HarvestTemplate")
    mapping = apps.get_model("harvest", "BudgetMapping")
    channel.objects.get_or_create(
        name="Selective", defaults={"queue": "crawl-high", "is_snapshot": False, "is_default": True}
    )
    channel.objects.get_or_create(
        name="Broad", defaults={"queue": "crawl-low", "is_snapshot": True, "is_default": True}
    )
    template.objects.get_or_create(name=DEFAULT_TEMPLATE["name"], defaults=DEFAULT_TEMPLATE)
    for depth, fields in TEMPLATES.items():
        tpl, _created = template.objects.get_or_create(name=fields["name"], defaults=fields)
        for budget, max_objects in BUDGET_OBJECTS.items():
            mapping.objects.get_or_create(
                budget=budget, depth=depth, defaults={"template": tpl, "max_objects": max_objects}
            )
