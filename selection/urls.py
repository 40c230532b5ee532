from django.urls import path

from selection.views import bulk, collections, compatibility, records, searches, validation
from selection.views import csv as csv_views

app_name = "selection"

urlpatterns = [
    path("collections/", collections.CollectionListView.as_view(), name="collection_list"),
    path("collections/new/", collections.CollectionCreateView.as_view(), name="collection_create"),
    path("collections/<int:pk>/", collections.CollectionDetailView.as_view(), name="collection_detail"),
    path("collections/<int:pk>/edit/", collections.CollectionEditView.as_view(), name="collection_edit"),
    path("collections/<int:pk>/themes/new/", collections.ThemeCreateView.as_view(), name="theme_create"),
    path("records/", records.RecordListView.as_view(), name="record_list"),
    path("records/propose/", records.RecordProposeView.as_view(), name="record_propose"),
    path("records/bulk-edit/", bulk.RecordBulkEditView.as_view(), name="record_bulk_edit"),
    path("records/<int:pk>/", records.RecordDetailView.as_view(), name="record_detail"),
    path("records/<int:pk>/edit/", records.RecordEditView.as_view(), name="record_edit"),
    path("records/<int:pk>/status/", records.RecordStatusView.as_view(), name="record_status"),
    path("records/<int:pk>/transfer/", records.RecordTransferView.as_view(), name="record_transfer"),
    path("validation/", validation.ValidationQueueView.as_view(), name="validation_queue"),
    path("validation/decide/", validation.ValidationDecisionView.as_view(), name="validation_decide"),
    path("searches/", searches.SavedSearchCreateView.as_view(), name="saved_search_create"),
    path("searches/<int:pk>/delete/", searches.SavedSearchDeleteView.as_view(), name="saved_search_delete"),
    path("compatibility/", compatibility.CompatibilityView.as_view(), name="compatibility"),
    path(
        "compatibility/<int:pk>/delete/",
        compatibility.CompatibilityRuleDeleteView.as_view(),
        name="compatibility_rule_delete",
    ),
    *csv_views.urlpatterns,
]
