"""Console routes of identity: API keys and people."""

from django.urls import path

from identity.views import clients, people

app_name = "identity"

urlpatterns = [
    path("keys/", clients.client_list, name="client-list"),
    path("keys/<int:client_id>/edit/", clients.client_edit, name="client-edit"),
    path("keys/<int:client_id>/rotate/", clients.client_rotate, name="client-rotate"),
    path("keys/<int:client_id>/revoke/", clients.client_revoke, name="client-revoke"),
    path("people/", people.person_list, name="person-list"),
    path("people/<int:person_id>/", people.person_edit, name="person-edit"),
    path("people/<int:person_id>/active/", people.person_active, name="person-active"),
]
