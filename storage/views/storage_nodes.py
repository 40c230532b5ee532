"""Storage pages (Operations, crawl engineers): the nodes with their capacity and replica counts,
adding a node, one node's replicas and history with its actions (offline, online, drain, verify
now), verifying one file's replicas, the storage's history, the alerts and the statistics.

Each action calls one service (storage.services.nodes, storage.services.audits), which makes the
change and writes the StorageEvent naming the engineer; verifications go to the workers once the
request's changes are committed. Reads are in storage.selectors_storage.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import DetailView, TemplateView, View

from storage import selectors_storage
from storage.filtersets import StorageEventFilterSet
from storage.forms import StorageNodeForm
from storage.models import STORAGE_NODE_TRANSITIONS, Replica, StorageEvent, StorageNode, WarcFile
from storage.services.audits import warc_file_verify
from storage.services.nodes import node_create, node_drain, node_set_offline, node_set_online, node_verify
from storage.tables import StorageNodeTable
from webarchive.permissions import ADD, CHANGE, VIEW, Area
from webarchive.views import (
    AreaRequiredMixin,
    ObjectListView,
    PermittedActionsMixin,
    RestrictedQuerysetMixin,
    ServiceFormView,
)

REPLICAS_PER_PAGE = 50
EVENTS_ON_NODE_PAGE = 20


class StorageAreaMixin(AreaRequiredMixin):
    """Operations area, and the view permission on storage nodes; every page shows the alert count."""

    area = Area.OPERATIONS
    model_permission = (VIEW, StorageNode)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["alert_count"] = selectors_storage.alert_count()
        return context


# Nodes ----------------------------------------------------------------------------------------------


class NodeListView(StorageAreaMixin, PermittedActionsMixin, ObjectListView):
    """The nodes: state, reachability, capacity and what they hold."""

    queryset = selectors_storage.nodes_with_counts()
    template_name = "storage/node_list.html"
    paginate_by = 100
    table_class = StorageNodeTable
    actions = (ADD,)


class NodeAddView(StorageAreaMixin, ServiceFormView):
    """Add a node: its root is created with its marker and measured (node_create)."""

    model_permission = (ADD, StorageNode)
    permission_denied_message = gettext_lazy("Only crawl engineers may add storage nodes.")
    form_class = StorageNodeForm
    template_name = "storage/node_form.html"
    title = gettext_lazy("Add a storage node")
    submit_label = gettext_lazy("Add")

    def perform(self, form):
        node = node_create(**form.cleaned_data, user=self.request.user)
        messages.success(self.request, _("Storage node %(name)s was added.") % {"name": node.name})
        return node


def node_offers(node: StorageNode) -> dict[str, bool]:
    """What a node's state lets an engineer do to it (its table, STORAGE_NODE_TRANSITIONS): a move to
    the state it is already in is not offered; a retired node is verified no more."""
    moves = {
        "offline": StorageNode.State.OFFLINE,
        "online": StorageNode.State.ONLINE,
        "drain": StorageNode.State.DRAINING,
    }
    offers = {
        name: state != node.state and STORAGE_NODE_TRANSITIONS.may(node.state, state)
        for name, state in moves.items()
    }
    offers["verify"] = node.state != StorageNode.State.RETIRED
    return offers


class NodeDetailView(StorageAreaMixin, PermittedActionsMixin, RestrictedQuerysetMixin, DetailView):
    """A node: its fields, its replicas (paginated) and its latest events, with its actions."""

    queryset = selectors_storage.nodes_with_counts()
    actions = (CHANGE,)
    template_name = "storage/node_detail.html"
    context_object_name = "node"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        node = self.object
        page = Paginator(selectors_storage.node_replicas(node), REPLICAS_PER_PAGE).get_page(
            self.request.GET.get("page")
        )
        context.update(
            {
                "page_obj": page,
                "paginator": page.paginator,
                "is_paginated": page.has_other_pages(),
                "events": node.events.select_related("warc_file", "user")[:EVENTS_ON_NODE_PAGE],
                "offers": node_offers(node),
            }
        )
        return context


class NodeActionView(StorageAreaMixin, View):
    """POST: one action on a node; a refusal is shown as the service words it."""

    model_permission = (CHANGE, StorageNode)
    permission_denied_message = gettext_lazy("Only crawl engineers may change storage nodes.")

    def act(self, node: StorageNode) -> tuple[str, str]:
        """Do the action; return the message's level and text."""
        raise NotImplementedError

    def post(self, request, pk):
        node = get_object_or_404(StorageNode, pk=pk)
        try:
            level, text = self.act(node)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        else:
            messages.add_message(request, level, text)
        return redirect(node.get_absolute_url())


class NodeOfflineView(NodeActionView):
    def act(self, node):
        reason = self.request.POST.get("reason", "").strip()[:1000]
        node = node_set_offline(node_id=node.pk, user=self.request.user, reason=reason)
        return messages.SUCCESS, _(
            "%(name)s is offline: its replicas are counted missing and its files are copied elsewhere."
        ) % {"name": node.name}


class NodeOnlineView(NodeActionView):
    def act(self, node):
        replica_ids = node_set_online(node_id=node.pk, user=self.request.user)
        node.refresh_from_db()
        if not node.reachable:
            return messages.WARNING, _("%(name)s is online but cannot be reached: %(reason)s") % {
                "name": node.name,
                "reason": node.unreachable_reason,
            }
        return messages.SUCCESS, _(
            "%(name)s is online; %(count)d replicas are being verified before they count again."
        ) % {"name": node.name, "count": len(replica_ids)}


class NodeDrainView(NodeActionView):
    def act(self, node):
        node = node_drain(node_id=node.pk, user=self.request.user)
        return messages.SUCCESS, _(
            "%(name)s is draining: its replicas are moved to other nodes, then it is retired."
        ) % {"name": node.name}


class NodeVerifyView(NodeActionView):
    def act(self, node):
        count = node_verify(node_id=node.pk, user=self.request.user)
        return messages.SUCCESS, _("%(count)d replicas of %(name)s are being verified.") % {
            "count": count,
            "name": node.name,
        }


class WarcFileVerifyView(AreaRequiredMixin, View):
    """POST: verify every replica of one file now (engineers); its page shows the results."""

    area = Area.OPERATIONS
    model_permission = (CHANGE, Replica)
    permission_denied_message = gettext_lazy("Only crawl engineers may verify replicas.")

    def post(self, request, pk):
        warc_file = get_object_or_404(WarcFile, pk=pk)
        count = warc_file_verify(warc_file_id=warc_file.pk, user=request.user)
        if count:
            messages.success(
                request,
                _("%(count)d replicas of %(name)s are being verified.")
                % {"count": count, "name": warc_file.name},
            )
        else:
            messages.warning(request, _("%(name)s has no replica to verify.") % {"name": warc_file.name})
        return redirect(warc_file.get_absolute_url())


# History, alerts, statistics ------------------------------------------------------------------------


class EventListView(StorageAreaMixin, ObjectListView):
    """The storage's history, newest first: copies, audits, repairs, node changes, alerts."""

    queryset = StorageEvent.objects.select_related("node", "warc_file", "user")
    filterset_class = StorageEventFilterSet
    template_name = "storage/storage_events.html"
    columns: list[str] = []


class AlertsView(StorageAreaMixin, TemplateView):
    """What needs attention: lost and under-replicated files, unavailable nodes, recent alerts."""

    template_name = "storage/storage_alerts.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["alerts"] = selectors_storage.alerts()
        return context


class StatisticsView(StorageAreaMixin, TemplateView):
    """Bytes and files stored per node, per harvest definition and per year."""

    template_name = "storage/storage_statistics.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            {
                "totals": selectors_storage.stored_totals(),
                "per_node": selectors_storage.stored_per_node(),
                "per_definition": selectors_storage.stored_per_definition(),
                "per_year": selectors_storage.stored_per_year(),
            }
        )
        return context


urlpatterns = [
    path("storage/nodes/", NodeListView.as_view(), name="node_list"),
    path("storage/nodes/add/", NodeAddView.as_view(), name="node_add"),
    path("storage/nodes/<int:pk>/", NodeDetailView.as_view(), name="node_detail"),
    path("storage/nodes/<int:pk>/offline/", NodeOfflineView.as_view(), name="node_offline"),
    path("storage/nodes/<int:pk>/online/", NodeOnlineView.as_view(), name="node_online"),
    path("storage/nodes/<int:pk>/drain/", NodeDrainView.as_view(), name="node_drain"),
    path("storage/nodes/<int:pk>/verify/", NodeVerifyView.as_view(), name="node_verify"),
    path("storage/events/", EventListView.as_view(), name="storage_events"),
    path("storage/alerts/", AlertsView.as_view(), name="storage_alerts"),
    path("storage/statistics/", StatisticsView.as_view(), name="storage_statistics"),
    path("files/<int:pk>/verify/", WarcFileVerifyView.as_view(), name="warcfile_verify"),
]
