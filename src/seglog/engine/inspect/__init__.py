"""Looking at a running or stopped system without changing it: ``seglog verify``'s checks
(:mod:`~seglog.engine.inspect.verify`), the metrics (:mod:`~seglog.engine.inspect.metrics`)
and the report's data (:mod:`~seglog.engine.inspect.report_data`).
"""
