from django.urls import path

from spaces.api import views

urlpatterns = [
    path("", views.IndexView.as_view(), name="index"),
    path("join", views.JoinView.as_view(), name="join"),
    path("reference", views.ReferenceView.as_view(), name="reference"),
    path("keys/<str:prefix>", views.KeyRevokeView.as_view(), name="key-revoke"),
    path("spaces/<slug:slug>", views.SpaceDetailView.as_view(), name="space"),
    path("spaces/<slug:slug>/join-links", views.JoinLinkListView.as_view(), name="join-links"),
    path("spaces/<slug:slug>/join-links/<str:link_id>", views.JoinLinkDetailView.as_view(), name="join-link"),
    path("spaces/<slug:slug>/members", views.MemberListView.as_view(), name="members"),
    path("spaces/<slug:slug>/members/<str:member_id>", views.MemberDetailView.as_view(), name="member"),
    path("spaces/<slug:slug>/members/<str:member_id>/keys", views.MemberKeysView.as_view(), name="member-keys"),
    path("spaces/<slug:slug>/charter", views.CharterListView.as_view(), name="charter"),
    path("spaces/<slug:slug>/charter/<str:work_item_id>", views.CharterItemView.as_view(), name="charter-item"),
    path("spaces/<slug:slug>/posts", views.PostListView.as_view(), name="posts"),
    path("spaces/<slug:slug>/posts/<str:post_id>/hide", views.PostHideView.as_view(), name="post-hide"),
    path("spaces/<slug:slug>/posts/<str:post_id>/withhold", views.PostWithholdView.as_view(), name="post-withhold"),
]
