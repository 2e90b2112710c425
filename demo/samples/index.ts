import mayaAndJonas from './maya-and-jonas.txt?raw';

/** A conversation written for the demo (LoCoMo's licence keeps it out of the repository). */
export interface Sample {
  name: string;
  title: string;
  text: string;
  questions: string[];
}

export const SAMPLE: Sample = {
  name: 'maya-and-jonas',
  title: 'Maya & Jonas — 5 sessions, March to May 2024',
  text: mayaAndJonas,
  questions: [
    "What is the name of Jonas's cat?",
    'Why did Jonas switch to the 10K race?',
    'When did Jonas run the race in Lisbon?',
    "Where does Maya's sister live?",
    'What did Maya sell at the craft fair?',
  ],
};
