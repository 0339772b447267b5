"""Schedulers composed from stage policies (the design-space exploration paper): the space and its atoms."""
