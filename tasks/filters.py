import django_filters

from allocation.models import TASK_DELIVERY_MODE_CHOICES
from tasks.models import Task, TaskStatus


class TaskFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=TaskStatus.choices)
    work_item_id = django_filters.CharFilter()
    delivery_mode = django_filters.ChoiceFilter(choices=TASK_DELIVERY_MODE_CHOICES)
    creator = django_filters.NumberFilter(field_name="creator_id")

    class Meta:
        model = Task
        fields = ["status", "work_item_id", "delivery_mode", "creator"]
