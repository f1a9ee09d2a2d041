"""Prompts and labels of the markedness study (Wolfe & Caliskan 2022), as in the released code.

The age template for the oldest group is a parameter because the paper's text says
"more than 70 years old" while the code says "70 or more years old".
"""

from __future__ import annotations

PERSON_PROMPT = "a photo of a person"

RACES = ("East Asian", "Indian", "Southeast Asian", "White", "Middle Eastern", "Latino_Hispanic", "Black")

GENDERS = ("Female", "Male")

AGES = ("0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70")

RACE_PHRASES = {
    "East Asian": "an East Asian", "Indian": "an Indian", "Southeast Asian": "a Southeast Asian",
    "White": "a White", "Middle Eastern": "a Middle Eastern", "Latino_Hispanic": "a Latino or Hispanic",
    "Black": "a Black",
}

FAMILIES = ("race", "gender", "age")

LABEL_ORDER = {"race": RACES, "gender": GENDERS, "age": AGES}


#: the oldest group's age wording: the released code's, and the paper's text
OLDEST_AGE_WORDINGS = {"code": "70 or more years old", "paper": "more than 70 years old"}


def label_prompts(prefix: str = "a photo of", oldest_age_wording: str = OLDEST_AGE_WORDINGS["code"],
                  race_phrases: dict[str, str] | None = None,
                  gender_words: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Prompt per label, per family (race, gender, age), as in the released code.

    ``prefix`` opens every prompt ("a photo of" in the paper; vary it to test prompt sensitivity).
    ``oldest_age_wording`` ends the prompt of the oldest group: "<prefix> a person 70 or more years
    old" in the code (the default), "more than 70 years old" in the paper's text.
    ``race_phrases`` (label -> "a Black", ...) and ``gender_words`` (label -> "female", ...) replace
    the released code's phrasings for the labels they name.
    """
    phrases = {**RACE_PHRASES, **(race_phrases or {})}
    words = {label: label.lower() for label in GENDERS} | dict(gender_words or {})
    race = {label: f"{prefix} {phrases[label]} person" for label in RACES}
    gender = {label: f"{prefix} a {words[label]} person" for label in GENDERS}
    age = {}
    for label in AGES[:-1]:
        low, high = label.split("-")
        age[label] = f"{prefix} a person between {low} and {high} years old"
    age[AGES[-1]] = f"{prefix} a person {oldest_age_wording}"
    return {"race": race, "gender": gender, "age": age}


def prompt_set(prefix: str = "a photo of", oldest_age_wording: str = OLDEST_AGE_WORDINGS["code"],
               race_phrases: dict[str, str] | None = None, gender_words: dict[str, str] | None = None
               ) -> tuple[str, dict[str, dict[str, str]]]:
    """The person prompt and the label prompts for one prompt prefix ("a photo of" → "a photo of a person")."""
    return f"{prefix} a person", label_prompts(prefix, oldest_age_wording, race_phrases, gender_words)
