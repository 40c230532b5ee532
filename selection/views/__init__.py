"""Selection pages, one module per subject; selection/urls.py gathers their URLs."""
