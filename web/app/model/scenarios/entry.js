// What the scenarios' steps share: an entry of the timeline, and the results workers A and B write.

export const e = (t, worker, op, args) => ({ t, worker, op, args });
export const A_RESULT = "A's result";
export const B_RESULT = "B's result";
