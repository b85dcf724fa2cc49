"""`smq ui`: the queue in the browser, served from this machine (:mod:`tjq.ui.server`)."""
