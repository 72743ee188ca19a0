from django.urls import path

from allocation import api

urlpatterns = [
    path("spaces/<slug:slug>/bind", api.BindView.as_view(), name="bind"),
]
