"""Drift news mailed: claimed under a lease, routed by the site's rules, sent once, marked
(``notifier``), as messages over SMTP (``email``)."""
