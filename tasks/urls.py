from django.urls import path

from tasks import api

urlpatterns = [
    path("spaces/<slug:slug>/tasks", api.TaskListView.as_view(), name="tasks"),
    path("spaces/<slug:slug>/tasks/window", api.TaskWindowView.as_view(), name="tasks-window"),
    path("spaces/<slug:slug>/tasks/<str:number>", api.TaskDetailView.as_view(), name="task"),
    path("spaces/<slug:slug>/tasks/<str:number>/history", api.TaskHistoryView.as_view(), name="task-history"),
    path("spaces/<slug:slug>/tasks/<str:number>/notes", api.TaskNotesView.as_view(), name="task-notes"),
]
