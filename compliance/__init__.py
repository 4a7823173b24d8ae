"""The compliance console: the audit log read by people and through the API (lists,
filters, exports, the dashboard, chain checks, what changed and why). It sits at
the top of the house and may read every app; its pages keep the ``audit:`` URL
namespace and ``templates/audit/``."""
