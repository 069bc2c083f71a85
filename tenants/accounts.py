"""Users are their e-mail addresses: the username Django keeps is internal (made unique from the
address at sign-up) and never shown."""


def user_display(user) -> str:
    """How a user is named to people: allauth's messages ("Successfully signed in as …"),
    admin's lists and choices, audit labels."""
    return user.email or user.get_username()
