"""The dashboard page, its script and its style sheet: package data served by `allot.dashboard.server`
(plain HTML, JavaScript and CSS, no build step, nothing fetched from elsewhere)."""
