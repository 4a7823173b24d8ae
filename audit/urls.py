"""Routes of the compliance console."""

from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path("audit/", views.event_list, name="event-list"),
    path("audit/verify/", views.verify, name="verify"),
    path("audit/dashboard/", views.dashboard, name="dashboard"),
    path("audit/export", views.export, name="export"),
    path("audit/<int:event_id>/", views.event_detail, name="event-detail"),
    path("audit/<int:event_id>/why-not/", views.why_not_box, name="why-not"),
]
