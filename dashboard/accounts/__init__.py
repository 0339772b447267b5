"""Accounts: sign-in throttling, teams and their members, invitations, API tokens (pages and services)."""
