"""Model providers behind one narrow interface (runtime.models.base.Model).

Providers are imported inside `build_model`, so an unused provider costs nothing at cold start.
"""
