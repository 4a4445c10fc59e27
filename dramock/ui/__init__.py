"""The device map served at /ui/ (static files, no build step: index.html, app.js, style.css)."""
