"""The Django admin for the selection side: collections with their themes and rights (members)."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from selection.models import Collection, CompatibilityRule, Keyword, Record, Theme


class NoDeleteMixin:
    """Archival objects and what they point to are never deleted."""

    def has_delete_permission(self, request, obj=None):
        return False


class ThemeInline(NoDeleteMixin, admin.TabularInline):
    model = Theme
    extra = 1
    fields = ["name", "is_active"]


@admin.register(Collection)
class CollectionAdmin(NoDeleteMixin, SimpleHistoryAdmin):
    list_display = ["name", "kind", "is_active"]
    list_filter = ["kind", "is_active"]
    search_fields = ["name", "description"]
    filter_horizontal = ["members"]
    inlines = [ThemeInline]


@admin.register(Theme)
class ThemeAdmin(NoDeleteMixin, SimpleHistoryAdmin):
    list_display = ["name", "collection", "is_active"]
    list_filter = ["collection", "is_active"]
    search_fields = ["name"]


@admin.register(Keyword)
class KeywordAdmin(NoDeleteMixin, admin.ModelAdmin):
    search_fields = ["name"]


@admin.register(CompatibilityRule)
class CompatibilityRuleAdmin(SimpleHistoryAdmin):
    list_display = ["__str__", "reason"]


@admin.register(Record)
class RecordAdmin(NoDeleteMixin, SimpleHistoryAdmin):
    """Records are read here; they are changed through the application, which applies the rules."""

    list_display = ["url", "collection", "status", "responsible", "is_active"]
    list_filter = ["status", "collection", "is_active", "needs_browser", "check_status"]
    search_fields = ["url", "content_notes", "technical_notes"]
    list_select_related = ["collection", "responsible"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
