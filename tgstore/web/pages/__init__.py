"""One module per page; tgstore.web.routes maps URLs to them. Each page imports the shared helpers
(tgstore.web.base) and the pieces it draws with, never another page."""
