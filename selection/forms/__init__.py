"""Console forms of the selection app: Try it and the selection settings."""

from selection.forms.settings import SelectionSettingsForm, SettingsFieldsForm
from selection.forms.try_it import TryItForm

__all__ = ["SelectionSettingsForm", "SettingsFieldsForm", "TryItForm"]
