from django.urls import path

from benchmarks import baseline_views
from settings.urls import urlpatterns as service_urlpatterns

urlpatterns = [
    path("bench/insert", baseline_views.InsertView.as_view()),
    path("bench/insert-idempotent", baseline_views.InsertIdempotentView.as_view()),
    path("bench/claim", baseline_views.ClaimView.as_view()),
] + service_urlpatterns
