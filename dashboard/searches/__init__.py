"""Design-space searches: the genetic search over staged policies, its coordinator, evaluations and pages."""
