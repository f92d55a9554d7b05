"""HTML reports of verification, performance, memory and training results."""
