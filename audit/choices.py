from django.db import models


class EventType(models.TextChoices):
    SELECTION = "selection", "Selection"
    VALIDATION = "validation", "Tool-call validation"
    SETTINGS = "settings", "Selection settings change"
