from django.urls import path

from selection import views

app_name = "selection"

urlpatterns = [
    path("collections/", views.CollectionListView.as_view(), name="collection_list"),
    path("collections/<int:pk>/", views.CollectionDetailView.as_view(), name="collection_detail"),
]
