"""Every write to tenancy: one transactional function per use case, each leaving an AuditEvent.

One module per concern; the public names are importable from here.
"""

from .audit import audit_event, audit_record
from .members import (
    LAST_OWNER,
    invitation_accept,
    invitation_email_send,
    invitation_from_token,
    invitation_revoke,
    invitation_token,
    invitation_url,
    member_add_by_operator,
    member_invite,
    member_remove,
    member_remove_by_operator,
    member_role_change,
    member_role_change_by_operator,
    user_create,
)
from .organizations import (
    organization_create,
    organization_delete,
    organization_reactivate,
    organization_suspend,
    organization_update,
    organization_update_by_operator,
)
from .projects import project_create, project_delete, project_namespace, project_update
from .sso import organization_sso_set
from .tokens import (
    operator_token_issue,
    token_authenticate,
    token_issue,
    token_revoke,
    token_revoke_by_operator,
)

__all__ = [
    "LAST_OWNER",
    "audit_event",
    "audit_record",
    "invitation_accept",
    "invitation_email_send",
    "invitation_from_token",
    "invitation_revoke",
    "invitation_token",
    "invitation_url",
    "member_add_by_operator",
    "member_invite",
    "member_remove",
    "member_remove_by_operator",
    "member_role_change",
    "member_role_change_by_operator",
    "operator_token_issue",
    "organization_create",
    "organization_delete",
    "organization_reactivate",
    "organization_sso_set",
    "organization_suspend",
    "organization_update",
    "organization_update_by_operator",
    "project_create",
    "project_delete",
    "project_namespace",
    "project_update",
    "token_authenticate",
    "token_issue",
    "token_revoke",
    "token_revoke_by_operator",
    "user_create",
]
