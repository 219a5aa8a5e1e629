"""The jobs the commands run: ``demo`` (an offline tour), ``pull`` (fetch the published catalog), ``nightly``
(crawl, compute, publish), ``publish`` (a datasette bundle; ``hubpublish``: a Hub dataset)."""
