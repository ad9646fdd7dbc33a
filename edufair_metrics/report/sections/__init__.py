"""The parts of the report folder, one module each, all formatting an
:class:`~edufair_metrics.analysis.audit.Audit` (``report.write.write_report`` calls them in order):
``files`` (the CSV/MD data files, paper tables, figures), ``summary`` (summary.md from its parts),
``run_card``, ``banners``, ``headline``, ``verdicts``, ``extensions``, ``outcome`` and ``manifest``
(``report_manifest.json``). The sections of other report modules (``threats``, ``placebo``,
``replicates``, ``judge_validity``, ``failures``) are appended by ``summary``."""
