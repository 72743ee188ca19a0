from django.urls import path

from allocation import api

urlpatterns = [
    path("spaces/<slug:slug>/bind", api.BindView.as_view(), name="bind"),
    path("spaces/<slug:slug>/holds", api.HoldListView.as_view(), name="holds"),
    path("spaces/<slug:slug>/holds/<str:work_item_id>", api.HoldDetailView.as_view(), name="hold"),
]
