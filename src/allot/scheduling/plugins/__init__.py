"""One module per scheduling plugin; `allot.scheduling.registry` names them."""
