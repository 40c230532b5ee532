"""Schedule pages (with their next runs) and harvest channel pages."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from harvest.choices import EndKind
from harvest.filtersets import ChannelFilterSet, ScheduleFilterSet
from harvest.forms.planning import ChannelForm, ScheduleForm
from harvest.models import HarvestChannel, Schedule
from harvest.services.planning import channel_save, schedule_save
from harvest.tables import ChannelTable, ScheduleTable
from webarchive.permissions import ADD, CHANGE, Area
from webarchive.views import ObjectDetailView, ObjectListView, PermittedActionsMixin, ServiceFormView

NEXT_RUNS = 5


class ScheduleListView(PermittedActionsMixin, ObjectListView):
    area = Area.PLANNING
    queryset = Schedule.objects.all()
    filterset_class = ScheduleFilterSet
    table_class = ScheduleTable
    actions = (ADD,)
    template_name = "harvest/schedule_list.html"


def schedule_next_runs(schedule: Schedule, count: int = NEXT_RUNS) -> list:
    """The schedule's next runs from now (or its start); a schedule of N runs shows N at most."""
    if schedule.end_kind == EndKind.RUNS:
        count = min(count, schedule.max_runs or count)
    return schedule.runs(max(timezone.now(), schedule.start), count=count)


class ScheduleDetailView(PermittedActionsMixin, ObjectDetailView):
    area = Area.PLANNING
    queryset = Schedule.objects.all()
    actions = (CHANGE,)
    template_name = "harvest/schedule_detail.html"
    fields = [
        "comments",
        "start",
        "every",
        "unit",
        "at_minute",
        "at_hour",
        "at_weekday",
        "at_day",
        "end_kind",
    ]

    def get_context_data(self, **kwargs):
        schedule = self.object
        ends = {EndKind.RUNS: ["max_runs"], EndKind.UNTIL: ["end_date"]}.get(schedule.end_kind, [])
        self.fields = [*type(self).fields, *ends]
        context = super().get_context_data(**kwargs)
        context.update(
            {
                "next_runs": schedule_next_runs(schedule),
                "time_zone": settings.TIME_ZONE,
                "definitions": schedule.harvest_definitions.select_related("channel").order_by("name"),
            }
        )
        return context


class ScheduleCreateView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (ADD, Schedule)
    form_class = ScheduleForm
    template_name = "harvest/schedule_form.html"
    title = gettext_lazy("New schedule")

    def perform(self, form):
        schedule = schedule_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("The schedule “%(name)s” was created.") % {"name": schedule})
        return schedule


class ScheduleEditView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (CHANGE, Schedule)
    form_class = ScheduleForm
    template_name = "harvest/schedule_form.html"

    @cached_property
    def schedule(self) -> Schedule:
        return get_object_or_404(Schedule, pk=self.kwargs["pk"])

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["instance"] = Schedule.objects.get(pk=self.schedule.pk)  # a copy for the form
        return kwargs

    def get_context_data(self, **kwargs):
        title = _("Edit the schedule “%(name)s”") % {"name": self.schedule}
        return super().get_context_data(title=title, schedule=self.schedule, **kwargs)

    def perform(self, form):
        schedule = schedule_save(
            schedule=self.schedule, user=self.request.user, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(
            self.request,
            _("The schedule was saved; the harvest definitions using it have their next run recomputed."),
        )
        return schedule


# Channels ------------------------------------------------------------------------------------


class ChannelListView(PermittedActionsMixin, ObjectListView):
    area = Area.PLANNING
    queryset = HarvestChannel.objects.all()
    filterset_class = ChannelFilterSet
    table_class = ChannelTable
    actions = (ADD, CHANGE)
    template_name = "harvest/channel_list.html"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "queues": settings.HARVEST_CRAWL_QUEUES}


class ChannelCreateView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (ADD, HarvestChannel)
    form_class = ChannelForm
    template_name = "harvest/channel_form.html"
    title = gettext_lazy("New harvest channel")

    def perform(self, form):
        channel = channel_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("The channel “%(name)s” was created.") % {"name": channel})
        return reverse("harvest:channel_list")


class ChannelEditView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (CHANGE, HarvestChannel)
    form_class = ChannelForm
    template_name = "harvest/channel_form.html"

    @cached_property
    def channel(self) -> HarvestChannel:
        return get_object_or_404(HarvestChannel, pk=self.kwargs["pk"])

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["instance"] = HarvestChannel.objects.get(pk=self.channel.pk)
        return kwargs

    def get_context_data(self, **kwargs):
        title = _("Edit the channel “%(name)s”") % {"name": self.channel}
        return super().get_context_data(title=title, channel=self.channel, **kwargs)

    def perform(self, form):
        channel = channel_save(
            channel=self.channel, user=self.request.user, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(self.request, _("The channel “%(name)s” was saved.") % {"name": channel})
        return reverse("harvest:channel_list")


urlpatterns = [
    path("schedules/", ScheduleListView.as_view(), name="schedule_list"),
    path("schedules/new/", ScheduleCreateView.as_view(), name="schedule_create"),
    path("schedules/<int:pk>/", ScheduleDetailView.as_view(), name="schedule_detail"),
    path("schedules/<int:pk>/edit/", ScheduleEditView.as_view(), name="schedule_edit"),
    path("channels/", ChannelListView.as_view(), name="channel_list"),
    path("channels/new/", ChannelCreateView.as_view(), name="channel_create"),
    path("channels/<int:pk>/edit/", ChannelEditView.as_view(), name="channel_edit"),
]
