module warden.dev/floor

go 1.26.0
