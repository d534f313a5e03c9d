"""The Agent Protocol (LangGraph API subset) on AG-UI threads: message shapes
(``messages``), run records (``runs``) and stream parts (``stream``); its routes
are ``ingress.agent_protocol``."""
