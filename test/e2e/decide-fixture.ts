// The review and the decide body the decision tests share (test/e2e/decisions.test.ts and the slow tier's
// resume comparison).

export const REVIEW = "I loved this film. The acting was wonderful and the story moved me to tears.";

export const DECIDE = {
  model: "anything",
  state: {review: REVIEW, stars_given: null},
  questions: {
    sentiment: {type: "choice", instructions: "What is the sentiment of the review?", criteria: {positive: "the reviewer liked it", negative: null, mixed: null}},
    stars: {type: "score", instructions: "How many stars would the reviewer give?", criteria: ["none", "one", "two", "three"]},
    film: {type: "noul", instructions: "Is the text about a film?"},
  },
};
