from django.urls import path

from exports import api

urlpatterns = [
    path("spaces/<slug:slug>/exports", api.ExportListView.as_view(), name="exports"),
    path("spaces/<slug:slug>/exports/<str:export_id>", api.ExportDetailView.as_view(), name="export"),
    path("spaces/<slug:slug>/exports/<str:export_id>/share", api.ExportShareView.as_view(), name="export-share"),
    path("spaces/<slug:slug>/exports/<str:export_id>/retry", api.ExportRetryView.as_view(), name="export-retry"),
    path("shares/<str:token>", api.SharedExportView.as_view(), name="share"),
]
