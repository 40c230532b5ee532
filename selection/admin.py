from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from selection.models import Collection


@admin.register(Collection)
class CollectionAdmin(SimpleHistoryAdmin):
    list_display = ["name", "kind", "is_active"]
    list_filter = ["kind", "is_active"]
    search_fields = ["name", "description"]
    filter_horizontal = ["members"]

    def has_delete_permission(self, request, obj=None):
        return False
