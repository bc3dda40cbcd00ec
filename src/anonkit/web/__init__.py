"""The local web app behind ``anonkit serve``: the steward's workflow in a browser
(:mod:`anonkit.web.app`), its guards (:mod:`anonkit.web.security`) and what it needs from
the job API (:mod:`anonkit.web.contract`)."""

from anonkit.web.app import Config, create_app

__all__ = ["Config", "create_app"]
