from django.urls import path

from tasks.fronts import rest as api

urlpatterns = [
    path("spaces/<slug:slug>/bind", api.BindView.as_view(), name="bind"),
    path("spaces/<slug:slug>/holds", api.HoldListView.as_view(), name="holds"),
    path("spaces/<slug:slug>/holds/<str:work_item_id>", api.HoldDetailView.as_view(), name="hold"),
    path("spaces/<slug:slug>/summary", api.SummaryView.as_view(), name="summary"),
    path("spaces/<slug:slug>/tasks", api.TaskListView.as_view(), name="tasks"),
    path("spaces/<slug:slug>/tasks/window", api.TaskWindowView.as_view(), name="tasks-window"),
    path("spaces/<slug:slug>/tasks/similar", api.SimilarTasksView.as_view(), name="tasks-similar"),
    path("spaces/<slug:slug>/tasks/<str:number>", api.TaskDetailView.as_view(), name="task"),
    path("spaces/<slug:slug>/tasks/<str:number>/history", api.TaskHistoryView.as_view(), name="task-history"),
    path("spaces/<slug:slug>/tasks/<str:number>/notes", api.TaskNotesView.as_view(), name="task-notes"),
    path("spaces/<slug:slug>/tasks/<str:number>/blockers", api.BlockerListView.as_view(), name="task-blockers"),
    path("spaces/<slug:slug>/tasks/<str:number>/blockers/<str:blocker>", api.BlockerDetailView.as_view(),
         name="task-blocker"),
    path("spaces/<slug:slug>/next", api.NextView.as_view(), name="next"),
    path("spaces/<slug:slug>/tasks/<str:number>/give-back", api.GiveBackView.as_view(), name="task-give-back"),
    path("spaces/<slug:slug>/tasks/<str:number>/heartbeat", api.HeartbeatView.as_view(), name="task-heartbeat"),
    path("spaces/<slug:slug>/tasks/<str:number>/assign", api.AssignView.as_view(), name="task-assign"),
    path("spaces/<slug:slug>/tasks/<str:number>/done", api.DoneView.as_view(), name="task-done"),
    path("spaces/<slug:slug>/tasks/<str:number>/attempts/<str:attempt>/confirm", api.CheckView.as_view(),
         name="attempt-confirm"),
    path("spaces/<slug:slug>/tasks/<str:number>/attempts/<str:attempt>/reject", api.RejectView.as_view(),
         name="attempt-reject"),
    path("spaces/<slug:slug>/tasks/<str:number>/supersede", api.SupersedeView.as_view(), name="task-supersede"),
    path("spaces/<slug:slug>/tasks/<str:number>/withdraw", api.WithdrawView.as_view(), name="task-withdraw"),
    path("spaces/<slug:slug>/tasks/<str:number>/reject", api.RejectTaskView.as_view(), name="task-reject"),
    path("notifications", api.NotificationListView.as_view(), name="notifications"),
    path("notifications/read", api.NotificationReadView.as_view(), name="notifications-read"),
]
