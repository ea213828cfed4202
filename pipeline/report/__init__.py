"""What a person reads about a built corpus."""
