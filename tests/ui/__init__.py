"""The monitor app and its widgets, driven by the Pilot; SVG snapshots of the screens that must stay right."""
