"""The Django admin for the planning side: read-only.

Planning objects are changed through the Planning pages and the API, whose
services apply the rules (aliases without chains, seed lists and
configurations nothing depends on, job transitions). Domains, harvest
definitions and jobs are never deleted, here or anywhere.
"""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from harvest import models


class ReadOnlyAdmin(SimpleHistoryAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Domain)
class DomainAdmin(ReadOnlyAdmin):
    list_display = ["name", "is_active", "alias_of", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "comments", "crawler_traps"]


@admin.register(models.DomainConfiguration)
class DomainConfigurationAdmin(ReadOnlyAdmin):
    list_display = ["domain", "name", "template", "max_objects", "max_bytes"]
    search_fields = ["domain__name", "name"]
    list_select_related = ["domain", "template"]


@admin.register(models.SeedList)
class SeedListAdmin(ReadOnlyAdmin):
    list_display = ["domain", "name"]
    search_fields = ["domain__name", "name", "seeds"]


@admin.register(models.HarvestTemplate)
class HarvestTemplateAdmin(ReadOnlyAdmin):
    list_display = ["name", "depth_policy", "obey_robots", "render", "version", "is_active"]


@admin.register(models.Schedule)
class ScheduleAdmin(ReadOnlyAdmin):
    list_display = ["name", "every", "unit", "end_kind", "start"]


@admin.register(models.HarvestChannel)
class HarvestChannelAdmin(ReadOnlyAdmin):
    list_display = ["name", "queue", "is_snapshot", "is_default"]


@admin.register(models.HarvestDefinition)
class HarvestDefinitionAdmin(ReadOnlyAdmin):
    list_display = ["name", "kind", "is_active", "channel", "next_date", "runs_done"]
    list_filter = ["kind", "is_active"]
    search_fields = ["name"]


@admin.register(models.GlobalCrawlerTrapList)
class GlobalCrawlerTrapListAdmin(ReadOnlyAdmin):
    list_display = ["name", "is_active"]


@admin.register(models.Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ["pk", "harvest_definition", "run_number", "status", "domain_count", "created_at"]
    list_filter = ["status"]
