package service

// NoteChat is noteChat, for the benchmark of what watching for recurring
// chains costs a chat.
var NoteChat = (*Service).noteChat
