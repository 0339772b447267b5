"""Capacity plans (issue 30): the smallest cluster that meets a service target, per scheduler, one task per probe."""
